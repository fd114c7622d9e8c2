pub mod racks;
