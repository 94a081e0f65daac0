// Installs the CUDA replay backend (built only with CUDA; see gpu.hpp).
#pragma once

namespace scout::scoutd {
void install_gpu_backend();
}
