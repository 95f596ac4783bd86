#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// An abstract shader's atomic binding (docs/format.md "Abstract shaders",
// semantics.atomic_addends): words[i] += mix_word(i, ref, 0) by atomicAdd for
// i < count, wrapping. The addends depend on the dispatch alone, so two such
// dispatches that race leave the same sum in any order.
layout(set = 0, binding = 0) buffer Words { uint words[]; };
layout(push_constant) uniform Push { uint ref; uint count; };

void main() {
    for (uint i = flat_invocation(); i < count; i += invocation_count())
        atomicAdd(words[i], mix_word(i, ref, 0u));
}
