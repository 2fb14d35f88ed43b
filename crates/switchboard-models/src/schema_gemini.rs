//! Gemini clean-up written straight to JSON (WIP, helper E).
