// The confirmation `<dialog id="confirm">` (buttons #confirm-yes and #confirm-no), opened as a
// modal while `question` is set.
import { useEffect, useRef } from "preact/hooks";
import { html } from "../html.js";

/**
 * question: null (closed) or `{title, text, yes}`; onAnswer(true | false) is called once per
 * question: yes, no, Escape or a click outside.
 */
export function ConfirmDialog({ question, onAnswer }) {
  const dialog = useRef(null);
  useEffect(() => {
    const element = dialog.current;
    if (question && !element.open) element.showModal();
    if (!question && element.open) element.close();
  }, [question]);

  return html`<dialog id="confirm" ref=${dialog}
    onCancel=${(event) => { event.preventDefault(); onAnswer(false); }}
    onClick=${(event) => { if (event.target === dialog.current) onAnswer(false); }}>
    ${question
      ? html`<div class="dialog-body">
          <h2>${question.title}</h2>
          <p>${question.text}</p>
          <div class="buttons">
            <button type="button" id="confirm-no" autofocus onClick=${() => onAnswer(false)}>Cancel</button>
            <button type="button" id="confirm-yes" class="danger" onClick=${() => onAnswer(true)}>${question.yes}</button>
          </div>
        </div>`
      : null}
  </dialog>`;
}
