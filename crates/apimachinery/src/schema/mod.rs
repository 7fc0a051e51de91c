//! The structural schema and the pure algorithms over it: prune, default, validate.
//! Nothing in `schema/` touches HTTP or storage.

pub mod default;
pub mod formats;
pub mod immutable;
pub mod listtype;
pub mod objectmeta;
pub mod property_names;
pub mod props;
pub mod prune;
pub mod sorted_map;
pub mod structural;
pub mod validate;
