// Storage image texels <-> u32 words of a buffer, for the replay of an abstract shader's storage image binding
// (docs/format.md, "Abstract shaders": the binding's bytes are its subresources in the model's linear layout), and
// sampled image texels -> words for a sampled binding (a combined image sampler, read with texelFetch: a
// shader_sampled_read, as the stream's).
// One mip level per dispatch, bound as a view of that level and the binding's layers in r32ui: the image is made
// with a mutable format, so a texel of any 4-byte format moves as its bytes, unconverted. Texel (x, y, z) of the
// view's layer l (z: the depth of a 3D view, whose l is 0) is word first + ((l * depth + z) * height + y) * width + x.
// image_load*.comp and image_store*.comp define IMAGE (uimage2DArray or uimage3D) and STORE (0: image to words,
// 1: words to image), sampled_load*.comp IMAGE (usampler2DArray or usampler3D) and SAMPLED; each includes this file.
#include "common.glsl"

#if STORE
layout(set = 0, binding = 0) readonly buffer Words { uint words[]; };
layout(set = 0, binding = 1, r32ui) uniform writeonly IMAGE image;
#elif SAMPLED
layout(set = 0, binding = 0) uniform IMAGE image;  // a view of one level: its lod 0
layout(set = 0, binding = 1) writeonly buffer Words { uint words[]; };
#else
layout(set = 0, binding = 0, r32ui) uniform readonly IMAGE image;
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
        imageStore(image, at, uvec4(words[first + i]));
#elif SAMPLED
        words[first + i] = texelFetch(image, at, 0).x;
#else
        words[first + i] = imageLoad(image, at).x;
#endif
    }
}
