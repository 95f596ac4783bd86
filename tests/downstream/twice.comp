#version 450
// The downstream engine's own kernel: dst[i] = 2 * src[i] + 1 (float32) for i < n.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { uint n; };

void main() {
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * 64)
        dst[i] = 2.0 * src[i] + 1.0;
}
