// A fixture for the layering check: lite builds without the core.
#include "deepflow/core/tensor.h"
