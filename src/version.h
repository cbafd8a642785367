// Version of the arrays and functions crossing the native boundary.
// Must equal NATIVE_API_VERSION in python/cwm/_version.py.
#pragma once
#define CWM_NATIVE_API_VERSION 10
