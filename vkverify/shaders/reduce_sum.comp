#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// dst[out_index] += src[0] + ... + src[n - 1], modulo 2^32. Each workgroup
// sums in shared memory and adds its partial sum atomically: uint addition is
// associative, so the result does not depend on the order of the atomics.
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { uint n; uint out_index; };

shared uint partial[64];

void main() {
    uint sum = 0u;
    for (uint i = flat_invocation(); i < n; i += invocation_count())
        sum += src[i];
    uint lane = gl_LocalInvocationID.x;
    partial[lane] = sum;
    barrier();
    for (uint width = 32u; width > 0u; width >>= 1) {
        if (lane < width)
            partial[lane] += partial[lane + width];
        barrier();
    }
    if (lane == 0u)
        atomicAdd(dst[out_index], partial[0]);
}
