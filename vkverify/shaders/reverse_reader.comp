#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// dst[i] = src[n - 1 - i] for i < n: with n a multiple of 64, workgroup g of
// N reads the block that workgroup N - 1 - g of a writer such as slow_writer
// writes, so the reader's first workgroups need the writer's last writes.
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { uint n; };

void main() {
    for (uint i = flat_invocation(); i < n; i += invocation_count())
        dst[i] = src[n - 1u - i];
}
