//! End-to-end tests of the samplers over hand-built pages, tiles and samplers.

mod fixture;

mod derivatives;
mod fallbacks;
mod filtering;
mod formats;
mod requests;
mod stochastic;
