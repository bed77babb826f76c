"""Several apps in one dashboard (issue 51): the apps a site may show (choice.py), the
URLs that keep the chosen one (urls.py), and the all-apps overview's numbers
(glance.py)."""
