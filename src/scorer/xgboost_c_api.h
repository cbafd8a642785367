// The few functions of XGBoost's C API that the scorer uses. The xgboost (xgboost-cpu)
// wheel ships lib/libxgboost.so but no headers, so they are declared here; signatures as
// in include/xgboost/c_api.h of XGBoost 3.2 (unchanged since 1.x, PredictFromDMatrix since
// 1.4). Every int-returning call returns 0 on success and -1 on failure (XGBGetLastError).
#pragma once
#include <cstdint>

extern "C" {
typedef uint64_t bst_ulong;   // NOLINT
typedef void* DMatrixHandle;  // NOLINT
typedef void* BoosterHandle;  // NOLINT

void XGBoostVersion(int* major, int* minor, int* patch);
const char* XGBGetLastError(void);
int XGDMatrixCreateFromMat(const float* data, bst_ulong nrow, bst_ulong ncol, float missing, DMatrixHandle* out);
int XGDMatrixFree(DMatrixHandle handle);
int XGBoosterCreate(const DMatrixHandle dmats[], bst_ulong len, BoosterHandle* out);
int XGBoosterFree(BoosterHandle handle);
int XGBoosterSetParam(BoosterHandle handle, const char* name, const char* value);
int XGBoosterLoadModel(BoosterHandle handle, const char* fname);
int XGBoosterGetNumFeature(BoosterHandle handle, bst_ulong* out);
// config: JSON {"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false}
int XGBoosterPredictFromDMatrix(BoosterHandle handle, DMatrixHandle dmat, const char* config,
                                const bst_ulong** out_shape, bst_ulong* out_dim, const float** out_result);
}
