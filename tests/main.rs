mod data_fixtures;
mod data_loaders;
mod data_split;
