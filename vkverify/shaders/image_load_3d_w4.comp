#version 450
#extension GL_GOOGLE_include_directive : require
#define IMAGE uimage3D
#define STORE 0
#define WORDS 4
#include "image.glsl"
