"""Helpers shared by the tests and the bench (``from tests.support.<module> import ...``).

* :mod:`tests.support.tiny_models`: the tiny model configs of every family, ``build_tiny``, the sentences;
* :mod:`tests.support.reference`: the ground truth, the model's own modules run with hooks;
* :mod:`tests.support.sinusoid`: the sinusoid of Vaswani et al. (2017) computed from its formula;
* :mod:`tests.support.local_hub`: a Hugging Face Hub on 127.0.0.1;
* :mod:`tests.support.apptest`: AppTest made to behave like the browser, and helpers;
* :mod:`tests.support.browser`: the app as a real server, and the Chromium to drive it.
"""
