//! kfdrt (being written)
