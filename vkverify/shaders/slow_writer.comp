#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// A writer that spins before each write, to widen race windows: for i < n,
// dst[i] = the LCG x -> x * 1664525 + 1013904223 (modulo 2^32) applied
// `iterations` times to value + i; iterations = 0 writes value + i.
layout(set = 0, binding = 0) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { uint n; uint iterations; uint value; };

void main() {
    for (uint i = flat_invocation(); i < n; i += invocation_count()) {
        uint x = value + i;
        for (uint k = 0u; k < iterations; ++k)
            x = x * 1664525u + 1013904223u;
        dst[i] = x;
    }
}
