// A fixture for the layering check (tests/CMakeLists.txt): core must not include keras.
#pragma once
#include "deepflow/keras/model.h"
