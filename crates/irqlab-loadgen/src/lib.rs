//! memcached load generator (see the crate description).
