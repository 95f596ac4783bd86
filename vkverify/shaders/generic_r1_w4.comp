#version 450
#extension GL_GOOGLE_include_directive : require
#define NREAD 1
#define NWRITE 4
#include "generic.glsl"
