"""Real-kernel tools: per-NAPI and coalescing knobs, IRQ suspend for unmodified programs."""
