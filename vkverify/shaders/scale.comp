#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// x[i] = factor * x[i] (float32, in place) for i < n.
layout(set = 0, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform Push { uint n; float factor; };

void main() {
    for (uint i = flat_invocation(); i < n; i += invocation_count())
        x[i] *= factor;
}
