// Storage image texels <-> u32 words of a buffer, for the replay of an abstract shader's storage image binding
// (docs/format.md, "Abstract shaders": the binding's bytes are its subresources in the model's linear layout), and
// sampled image texels -> words for a sampled binding (a combined image sampler, read with texelFetch: a
// shader_sampled_read, as the stream's).
// One mip level per dispatch, bound as a view of that level and the binding's layers in r32ui, rg32ui or rgba32ui
// (WORDS 1, 2 or 4: the texel block's u32 words): the image is made with a mutable format, so a texel (a compressed
// format's block) of any format of that size moves as its bytes, unconverted. Texel (x, y, z) of the view's layer l
// (z: the depth of a 3D view, whose l is 0) is words first + (((l * depth + z) * height + y) * width + x) * WORDS on.
// image_load*.comp and image_store*.comp define IMAGE (uimage2DArray or uimage3D) and STORE (0: image to words,
// 1: words to image), sampled_load*.comp IMAGE (usampler2DArray or usampler3D) and SAMPLED; the _w2 and _w4 forms
// define WORDS (default 1); each includes this file.
#include "common.glsl"

#ifndef WORDS
#define WORDS 1
#endif
#if WORDS == 1
#define TEXEL_FORMAT r32ui
#elif WORDS == 2
#define TEXEL_FORMAT rg32ui
#else
#define TEXEL_FORMAT rgba32ui
#endif

#if STORE
layout(set = 0, binding = 0) readonly buffer Words { uint words[]; };
layout(set = 0, binding = 1, TEXEL_FORMAT) uniform writeonly IMAGE image;
#elif SAMPLED
layout(set = 0, binding = 0) uniform IMAGE image;  // a view of one level: its lod 0
layout(set = 0, binding = 1) writeonly buffer Words { uint words[]; };
#else
layout(set = 0, binding = 0, TEXEL_FORMAT) uniform readonly IMAGE image;
layout(set = 0, binding = 1) writeonly buffer Words { uint words[]; };
#endif
layout(push_constant) uniform Push { uint first; };

void main() {
    // A 2D array view's z is its layer count.
#if SAMPLED
    uvec3 size = uvec3(textureSize(image, 0));
#else
    uvec3 size = uvec3(imageSize(image));
#endif
    uint count = size.x * size.y * size.z;
    for (uint i = flat_invocation(); i < count; i += invocation_count()) {
        ivec3 at = ivec3(i % size.x, i / size.x % size.y, i / (size.x * size.y));
#if STORE
        uvec4 texel = uvec4(0u);
        for (uint k = 0u; k < WORDS; k++) {
            texel[k] = words[first + i * WORDS + k];
        }
        imageStore(image, at, texel);
#else
#if SAMPLED
        uvec4 texel = texelFetch(image, at, 0);
#else
        uvec4 texel = imageLoad(image, at);
#endif
        for (uint k = 0u; k < WORDS; k++) {
            words[first + i * WORDS + k] = texel[k];
        }
#endif
    }
}
