#version 450
#extension GL_GOOGLE_include_directive : require
#define NREAD 3
#define NWRITE 3
#include "generic.glsl"
