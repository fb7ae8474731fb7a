// The drill editor: CodeMirror 6 with Python, bracket matching, smart indentation, a light and a dark theme.
// Bundled by esbuild (build.mjs) into static/dist/editor.js as one IIFE exposing window.QuizEditor;
// static/js/drill.js upgrades the drill page's <textarea> with it (the textarea stays the form field).
import { closeBrackets, closeBracketsKeymap } from "@codemirror/autocomplete";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import { bracketMatching, defaultHighlightStyle, indentOnInput, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { Compartment, EditorState } from "@codemirror/state";
import { oneDark } from "@codemirror/theme-one-dark";
import {
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
} from "@codemirror/view";

const light = [syntaxHighlighting(defaultHighlightStyle, { fallback: true }), EditorView.theme({}, { dark: false })];
const dark = [oneDark];

// mount(host, textarea, {dark, onSubmit}) -> {view, setDark(bool)}: keeps textarea.value equal to the document.
function codeLabel(textarea) {
  const label = textarea.id ? document.querySelector(`label[for="${textarea.id}"]`) : null;
  return (label && label.textContent.trim()) || "Your code";
}

export function mount(host, textarea, options = {}) {
  const theme = new Compartment();
  const submitKeys = keymap.of([
    {
      key: "Mod-Enter",
      preventDefault: true,
      run: () => {
        if (options.onSubmit) options.onSubmit();
        return true;
      },
    },
  ]);
  const view = new EditorView({
    parent: host,
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        submitKeys,
        lineNumbers(),
        highlightActiveLineGutter(),
        highlightActiveLine(),
        history(),
        drawSelection(),
        indentUnit.of("    "),
        indentOnInput(),
        bracketMatching(),
        closeBrackets(),
        python(),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, indentWithTab]),
        theme.of(options.dark ? dark : light),
        // The textarea's own label, in the page's language (docs/i18n.md).
        EditorView.contentAttributes.of({ "aria-label": codeLabel(textarea), spellcheck: "false" }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) textarea.value = update.state.doc.toString();
        }),
      ],
    }),
  });
  return {
    view,
    setDark(on) {
      view.dispatch({ effects: theme.reconfigure(on ? dark : light) });
    },
    setValue(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
  };
}
