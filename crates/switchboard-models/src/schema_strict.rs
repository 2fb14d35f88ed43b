//! OpenAI strict mode written straight to JSON (WIP, helper F).
