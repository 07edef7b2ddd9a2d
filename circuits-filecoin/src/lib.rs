//! Filecoin proof kinds for cuzk (work in progress).
