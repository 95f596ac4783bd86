#version 450
#extension GL_GOOGLE_include_directive : require
#define NREAD 2
#define NWRITE 4
#include "generic.glsl"
