mod build_rules;
mod check;
mod corpora;
mod init;
mod tidy;
mod util;
