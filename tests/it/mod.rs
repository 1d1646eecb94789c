mod build_rules;
mod check;
mod corpora;
mod index;
mod init;
mod tidy;
mod util;
mod watch;
