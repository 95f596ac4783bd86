// Shared by every kernel: 64 invocations per workgroup and a grid-stride loop
// over the flattened [x, y, z] group grid, so any group count covers every
// element and the results depend on the group count only when it is zero.
layout(local_size_x = 64) in;

uint flat_invocation() {
    uvec3 g = gl_WorkGroupID, n = gl_NumWorkGroups;
    return ((g.z * n.y + g.y) * n.x + g.x) * 64u + gl_LocalInvocationID.x;
}

uint invocation_count() {
    return gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z * 64u;
}

// murmur3's 32-bit finalizer: a bijection on uint, so it loses no input bit.
uint fmix32(uint h) {
    h ^= h >> 16; h *= 0x85EBCA6Bu;
    h ^= h >> 13; h *= 0xC2B2AE35u;
    return h ^ (h >> 16);
}

// The abstract-shader contract's output word for index i (semantics.mix):
// generic kernels write mix_word(i, ref, checksum), atomic_add adds mix_word(i, ref, 0).
uint mix_word(uint i, uint ref, uint check) {
    return fmix32(i ^ ref * 0x9E3779B1u ^ check * 0x85EBCA77u);
}
