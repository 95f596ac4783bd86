#version 450
#extension GL_GOOGLE_include_directive : require
#define NREAD 0
#define NWRITE 2
#include "generic.glsl"
