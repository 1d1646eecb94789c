// The web view's one script: '/' moves to the page's first text field, as in most
// search pages. Pages work without it.
document.addEventListener("keydown", function (event) {
  if (event.key !== "/" || event.target.matches("input, textarea")) return;
  var field = document.querySelector("main input[type=text], main input:not([type])");
  if (field) { event.preventDefault(); field.focus(); }
});
