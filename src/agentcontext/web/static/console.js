// Small helpers that only improve pages which work without JavaScript: copy buttons.
(function () {
  document.querySelectorAll('button.copy[data-copy]').forEach(function (button) {
    var source = document.getElementById(button.getAttribute('data-copy'));
    if (!source) return;
    button.hidden = false;
    button.addEventListener('click', function () {
      var text = source.value !== undefined ? source.value : source.textContent;
      var done = function () { button.textContent = 'Copied'; setTimeout(function () { button.textContent = 'Copy to clipboard'; }, 1500); };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, function () { source.select(); document.execCommand('copy'); done(); });
      } else { source.select(); document.execCommand('copy'); done(); }
    });
  });
})();
