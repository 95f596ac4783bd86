#version 450
#extension GL_GOOGLE_include_directive : require
#define IMAGE usampler2DArray
#define STORE 0
#define SAMPLED 1
#include "image.glsl"
