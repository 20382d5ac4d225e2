"""Categories of direct identifiers (protected health information), shared by every NER backend,
the synthetic corpus's gold spans and the reports."""

NAME = "NAME"  # patients, relatives, clinicians
LOCATION = "LOCATION"  # addresses, streets, cities, states, countries, zip codes
HOSPITAL = "HOSPITAL"  # hospitals, clinics, care homes, other organisations
DATE = "DATE"  # any date or part of one (7/22, July 22nd, 2023-07-22)
AGE = "AGE"
ID = "ID"  # record numbers, social security numbers, account and licence numbers
PHONE = "PHONE"
EMAIL = "EMAIL"
URL = "URL"

PHI_LABELS = (NAME, LOCATION, HOSPITAL, DATE, AGE, ID, PHONE, EMAIL, URL)
