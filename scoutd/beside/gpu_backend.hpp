// Installs the CUDA replay backend (built only with CUDA; see gpu.hpp).
// Every GPU call runs in a short-lived child process with a deadline
// (replay/child_run.hpp): scoutd itself never initialises CUDA.
#pragma once

namespace scout::scoutd {
void install_gpu_backend(double deadline_s);
}
