#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// y[r] = sum over c of m[r * cols + c] * x[c], modulo 2^32, for r < rows.
layout(set = 0, binding = 0) readonly buffer M { uint m[]; };
layout(set = 0, binding = 1) readonly buffer X { uint x[]; };
layout(set = 0, binding = 2) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; };

void main() {
    for (uint r = flat_invocation(); r < rows; r += invocation_count()) {
        uint sum = 0u;
        for (uint c = 0u; c < cols; ++c)
            sum += m[r * cols + c] * x[c];
        y[r] = sum;
    }
}
