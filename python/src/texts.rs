//! Reading pycocoevalcap's `gts` / `res` dicts without copying their captions: the scorers
//! borrow each `str`'s UTF-8 text from the interpreter while holding a reference to it.

use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use capscore_core::pretokenized::Captions;

// Part of the stable ABI since CPython 3.10 (pyo3 declares it only when building for 3.10+;
// the wheel is abi3 for 3.9+, so it is declared here and only called on 3.10+).
extern "C" {
    fn PyUnicode_AsUTF8AndSize(
        unicode: *mut ffi::PyObject,
        size: *mut ffi::Py_ssize_t,
    ) -> *const std::os::raw::c_char;
}

/// True when the running interpreter lends UTF-8 text through the stable ABI.
fn can_borrow(py: Python<'_>) -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| py.version_info() >= (3, 10))
}

/// The captions of a `gts` / `res` pair, image by image in `gts` order: each image's
/// candidate, then its references. Each text is a (pointer, length) pair of UTF-8 bytes that
/// stays valid while `self` lives: either inside a `str` object `self` holds a reference to
/// (`str` objects are immutable and keep their UTF-8 form until freed), or inside a copy in
/// `_owned` (CPython 3.9).
pub struct GtsRes {
    _keep: Vec<Py<PyAny>>,
    _owned: Vec<String>,
    texts: Vec<(*const u8, usize)>,
    /// Per image, where its texts start in `texts` (candidate first); one more at the end.
    starts: Vec<usize>,
}

impl GtsRes {
    /// Reads `gts` and `res` when they have exactly pycocoevalcap's shape: two `dict`s with
    /// the same keys, each `gts` value a `list` of at least one `str`, each `res` value a
    /// `list` of one `str`. `None` otherwise: the caller takes the general path, which raises
    /// the errors.
    pub fn read(
        py: Python<'_>,
        gts: &Bound<'_, PyAny>,
        res: &Bound<'_, PyAny>,
    ) -> PyResult<Option<GtsRes>> {
        let (Ok(gts), Ok(res)) = (
            gts.downcast_exact::<PyDict>(),
            res.downcast_exact::<PyDict>(),
        ) else {
            return Ok(None);
        };
        if gts.len() != res.len() {
            return Ok(None);
        }
        let borrow = can_borrow(py);
        let mut out = GtsRes {
            _keep: Vec::new(),
            _owned: Vec::new(),
            texts: Vec::new(),
            starts: Vec::with_capacity(gts.len() + 1),
        };
        // The items first: looking a key up in `res` runs its `__hash__` / `__eq__`, which may
        // change `gts`, and iterating a dict that changes size panics (a copy of the items does
        // not change; the captions read are the ones the copy holds).
        let items: Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)> = gts.iter().collect();
        for (key, refs) in items {
            let Some(hypo) = res.get_item(&key)? else {
                return Ok(None);
            };
            let (Ok(hypo), Ok(refs)) = (
                hypo.downcast_exact::<PyList>(),
                refs.downcast_exact::<PyList>(),
            ) else {
                return Ok(None);
            };
            if hypo.len() != 1 || refs.is_empty() {
                return Ok(None);
            }
            out.starts.push(out.texts.len());
            for s in hypo.iter().chain(refs.iter()) {
                if !out.push(py, s, borrow)? {
                    return Ok(None);
                }
            }
        }
        out.starts.push(out.texts.len());
        if gts.len() != out.len() || res.len() != out.len() {
            // A key's `__hash__` / `__eq__` changed a dict: the general path takes it.
            return Ok(None);
        }
        Ok(Some(out))
    }

    /// Adds one text; false when `s` is not a `str` or has no UTF-8 form.
    fn push(&mut self, py: Python<'_>, s: Bound<'_, PyAny>, borrow: bool) -> PyResult<bool> {
        let Ok(s) = s.downcast_into::<PyString>() else {
            return Ok(false);
        };
        if borrow {
            let mut len: ffi::Py_ssize_t = 0;
            // SAFETY: `s` is a `str` (checked above) and we hold the GIL; the returned buffer
            // belongs to `s`, which `_keep` keeps alive.
            let p = unsafe { PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut len) };
            if p.is_null() {
                // Lone surrogates: the general path raises the interpreter's error.
                drop(PyErr::take(py));
                return Ok(false);
            }
            self.texts.push((p.cast::<u8>(), len as usize));
            self._keep.push(s.into_any().unbind());
        } else {
            let Ok(text) = s.to_cow() else {
                drop(PyErr::take(py));
                return Ok(false);
            };
            let text = text.into_owned();
            // A String's heap buffer does not move when `_owned` grows.
            self.texts.push((text.as_ptr(), text.len()));
            self._owned.push(text);
        }
        Ok(true)
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    fn text(&self, k: usize) -> &str {
        let (p, len) = self.texts[k];
        // SAFETY: UTF-8 bytes (the interpreter's UTF-8 form, or a String) that live as long as
        // `self` (see the struct's documentation), never written to.
        unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(p, len)) }
    }

    /// The captions, borrowed.
    pub fn captions(&self) -> Captions<'_> {
        let mut caps = Captions::new();
        caps.candidates.reserve(self.len());
        caps.references.reserve(self.texts.len() - self.len());
        for w in self.starts.windows(2) {
            caps.push(self.text(w[0]), (w[0] + 1..w[1]).map(|k| self.text(k)));
        }
        caps
    }
}
