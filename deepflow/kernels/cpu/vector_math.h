// SPDX-License-Identifier: Apache-2.0
// SIMD declarations of glibc's libmvec math functions, so `omp simd` loops over
// expf, logf, tanhf... call the 8-lane AVX2 variants (_ZGVdN8v_expf).
//
// glibc declares these only under -ffast-math, which we do not use (it would
// break NaN and inf handling elsewhere); libm.so pulls libmvec in as needed.
#pragma once

extern "C" {
#pragma omp declare simd notinbranch
float expf(float) noexcept;
#pragma omp declare simd notinbranch
float logf(float) noexcept;
#pragma omp declare simd notinbranch
float log1pf(float) noexcept;
#pragma omp declare simd notinbranch
float expm1f(float) noexcept;
#pragma omp declare simd notinbranch
float sinf(float) noexcept;
#pragma omp declare simd notinbranch
float cosf(float) noexcept;
#pragma omp declare simd notinbranch
float tanhf(float) noexcept;
#pragma omp declare simd notinbranch
float erff(float) noexcept;
#pragma omp declare simd notinbranch
float powf(float, float) noexcept;
}
