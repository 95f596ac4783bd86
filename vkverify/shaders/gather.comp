#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// dst[i] = src[idx[i]] if idx[i] < src_n else 0, for i < n.
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 2) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { uint n; uint src_n; };

void main() {
    for (uint i = flat_invocation(); i < n; i += invocation_count()) {
        uint j = idx[i];
        dst[i] = j < src_n ? src[j] : 0u;
    }
}
