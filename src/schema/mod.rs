//! The structural schema and the pure algorithms over it: prune, default, validate.
//! Nothing in `schema/` touches HTTP or storage.

pub mod props;
