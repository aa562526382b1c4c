// The new-project form: while the person has not typed a short name (slug) themselves, fill it
// with the one the server makes from the title's pinyin. The field stays editable.
(function () {
  "use strict";
  const form = document.getElementById("create-form");
  if (!form || !form.dataset.slugUrl) return;
  const title = form.querySelector("input[name=title]");
  const slug = form.querySelector("input[name=slug]");
  if (!title || !slug) return;
  let typed = slug.value !== "";
  let timer = null;
  slug.addEventListener("input", function () { typed = slug.value !== ""; });
  title.addEventListener("input", function () {
    if (typed) return;
    clearTimeout(timer);
    timer = setTimeout(async function () {
      if (typed || !title.value.trim()) return;
      const url = form.dataset.slugUrl + "?title=" + encodeURIComponent(title.value);
      const response = await fetch(url, {headers: {"Accept": "application/json"}, credentials: "same-origin"});
      if (response.ok && !typed) slug.value = (await response.json()).slug;
    }, 250);
  });
})();
