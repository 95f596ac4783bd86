#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// c[i] = a[i] + b[i] (float32) for i < n.
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint n; };

void main() {
    for (uint i = flat_invocation(); i < n; i += invocation_count())
        c[i] = a[i] + b[i];
}
