#version 450
#extension GL_GOOGLE_include_directive : require
#define IMAGE uimage2DArray
#define STORE 0
#define WORDS 2
#include "image.glsl"
