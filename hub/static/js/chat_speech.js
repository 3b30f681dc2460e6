// Optional speech, only where the browser itself offers it (the Web Speech API; the hub calls no speech service):
// a microphone button that dictates into the message box, and reading the system's replies aloud. Both controls
// stay hidden in browsers without the API. Recognition asks for on-device processing where the browser supports it.

export function setUpSpeech({ input, micButton, readAloud, announce }) {
  const Recognition = window.SpeechRecognition || window.webkitSpeechRecognition;
  if (Recognition && micButton) {
    micButton.hidden = false;
    let listening = null;
    micButton.addEventListener("click", () => {
      if (listening) {
        listening.stop();
        return;
      }
      const recognition = new Recognition();
      recognition.lang = document.documentElement.lang || navigator.language || "en";
      recognition.interimResults = false;
      if ("processLocally" in recognition) recognition.processLocally = true;
      recognition.addEventListener("result", (event) => {
        const words = Array.from(event.results)
          .map((r) => r[0].transcript)
          .join(" ")
          .trim();
        if (words) input.value = input.value ? `${input.value.replace(/\s+$/, "")} ${words}` : words;
      });
      recognition.addEventListener("error", (event) => announce(`Speech input stopped: ${event.error || "unavailable"}.`));
      recognition.addEventListener("end", () => {
        listening = null;
        micButton.setAttribute("aria-pressed", "false");
        input.focus();
      });
      try {
        recognition.start();
        listening = recognition;
        micButton.setAttribute("aria-pressed", "true");
        announce("Listening: speak your message, then press the microphone again or pause.");
      } catch (error) {
        announce(`Speech input is not available: ${error.message}`);
      }
    });
  }

  const synth = "speechSynthesis" in window && typeof window.SpeechSynthesisUtterance === "function";
  if (synth && readAloud) {
    readAloud.closest("label").hidden = false;
    readAloud.checked = localStorage.getItem("chat-read-aloud") === "1";
    readAloud.addEventListener("change", () => {
      localStorage.setItem("chat-read-aloud", readAloud.checked ? "1" : "0");
      if (!readAloud.checked) window.speechSynthesis.cancel();
    });
  }
  return {
    speak(text) {
      if (!synth || !readAloud || !readAloud.checked || !text) return;
      window.speechSynthesis.cancel();
      window.speechSynthesis.speak(new SpeechSynthesisUtterance(text));
    },
  };
}
