// `html`: htm bound to Preact's `h`, the one way the dashboard writes markup (no JSX, no build step
// beyond bundling).
import { h } from "preact";
import htm from "htm";

export const html = htm.bind(h);
