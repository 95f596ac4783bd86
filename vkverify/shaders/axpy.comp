#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// y[i] = alpha * x[i] + y[i] (float32, rounded after the multiply) for i < n.
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; float alpha; };

void main() {
    for (uint i = flat_invocation(); i < n; i += invocation_count()) {
        // precise forbids fusing into an fma, so the result is the same on
        // every device and in numpy.
        precise float r = alpha * x[i] + y[i];
        y[i] = r;
    }
}
