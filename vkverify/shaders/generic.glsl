// The generic kernel for abstract shaders; generic_rR_wW.comp defines NREAD
// (0..4) and NWRITE (1..4) and includes this file. The contract, which
// vkverify/shaders/semantics.py (generic) restates in numpy:
//   bindings 0 .. NREAD-1 are read, NREAD .. NREAD+NWRITE-1 are written;
//   push constants: ref, then counts[b] = u32 words of binding b;
//   checksum = 0x811C9DC5, then for each read binding in binding order and
//     each word w of it: checksum = fmix32(checksum ^ w);
//   written[b][i] = mix_word(i, ref, checksum)
//     = fmix32(i ^ ref * 0x9E3779B1 ^ checksum * 0x85EBCA77)
//     for every i < counts[b].
// fmix32 and the odd multipliers are bijections, so a change in any single
// input word changes the checksum and therefore every output word.
#include "common.glsl"

#define READ(k) layout(set = 0, binding = k) readonly buffer Read##k { uint words[]; } read##k
#define WRITE(k) layout(set = 0, binding = NREAD + k) writeonly buffer Write##k { uint words[]; } write##k

#if NREAD > 0
READ(0);
#endif
#if NREAD > 1
READ(1);
#endif
#if NREAD > 2
READ(2);
#endif
#if NREAD > 3
READ(3);
#endif
WRITE(0);
#if NWRITE > 1
WRITE(1);
#endif
#if NWRITE > 2
WRITE(2);
#endif
#if NWRITE > 3
WRITE(3);
#endif

layout(push_constant) uniform Push { uint ref; uint counts[NREAD + NWRITE]; };

// Every invocation hashes all read words itself: no cross-workgroup
// communication, so the result is the same for any group count, at a cost of
// (read words) steps per invocation.
#define ABSORB(k) for (uint w = 0u; w < counts[k]; ++w) checksum = fmix32(checksum ^ read##k.words[w])
#define EMIT(k) if (i < counts[NREAD + k]) write##k.words[i] = value

void main() {
    uint checksum = 0x811C9DC5u;
#if NREAD > 0
    ABSORB(0);
#endif
#if NREAD > 1
    ABSORB(1);
#endif
#if NREAD > 2
    ABSORB(2);
#endif
#if NREAD > 3
    ABSORB(3);
#endif
    uint most = 0u;
    for (uint k = NREAD; k < NREAD + NWRITE; ++k)
        most = max(most, counts[k]);
    for (uint i = flat_invocation(); i < most; i += invocation_count()) {
        uint value = mix_word(i, ref, checksum);
        EMIT(0);
#if NWRITE > 1
        EMIT(1);
#endif
#if NWRITE > 2
        EMIT(2);
#endif
#if NWRITE > 3
        EMIT(3);
#endif
    }
}
