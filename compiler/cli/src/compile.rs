//! `splashc compile`.

pub fn run(args: &crate::CompileArgs) -> u8 {
    let _ = args;
    eprintln!("splashc compile: not available yet");
    2
}
