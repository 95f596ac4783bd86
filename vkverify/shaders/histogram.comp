#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// bins[src[i] % nbins] += 1 (atomically) for i < n; nbins must be >= 1.
// The bins accumulate: the caller clears them first.
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) buffer Bins { uint bins[]; };
layout(push_constant) uniform Push { uint n; uint nbins; };

void main() {
    for (uint i = flat_invocation(); i < n; i += invocation_count())
        atomicAdd(bins[src[i] % nbins], 1u);
}
