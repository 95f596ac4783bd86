#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// An abstract shader's uniform binding, read as a uniform buffer (uniform_read, as the stream's access is) into
// u32 words of a scratch buffer that the generic kernel reads: words[i] = src[i] for i < count. The block is
// 64 KiB (maxUniformBufferRange on common devices); the descriptor's range may be shorter, and is all it reads.
layout(set = 0, binding = 0) uniform Src { uvec4 src[4096]; };
layout(set = 0, binding = 1) writeonly buffer Words { uint words[]; };
layout(push_constant) uniform Push { uint count; };

void main() {
    for (uint i = flat_invocation(); i < count; i += invocation_count())
        words[i] = src[i / 4u][i % 4u];
}
