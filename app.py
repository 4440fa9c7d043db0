"""posviz: the Streamlit app. Run with `streamlit run app.py`."""

from posviz.app.navigation import main

main()
