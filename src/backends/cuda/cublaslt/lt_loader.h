// cuBLASLt is opened on first use (lt_loader.cc), not linked: kiln's calls to the cuBLASLt API
// go to forwarding definitions of the functions it uses.
#pragma once

#include "kiln/status.h"

namespace kiln {

// Opens cuBLASLt if it is not open yet. An error names the library and why it did not load.
Status load_cublaslt();

}  // namespace kiln
