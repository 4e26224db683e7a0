//! kfd-emu (being written)
