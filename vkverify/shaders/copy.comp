#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// dst[i] = src[i] for i < n.
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { uint n; };

void main() {
    for (uint i = flat_invocation(); i < n; i += invocation_count())
        dst[i] = src[i];
}
