// `html`: htm bound to Preact's `h`, the one way the dashboard writes markup (no JSX, no build
// step: the browser loads these modules as they are).
import { h } from "preact";
import htm from "htm";

export const html = htm.bind(h);
